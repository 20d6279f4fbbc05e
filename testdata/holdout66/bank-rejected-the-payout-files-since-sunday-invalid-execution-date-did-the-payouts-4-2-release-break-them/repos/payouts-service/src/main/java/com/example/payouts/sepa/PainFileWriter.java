package com.example.payouts.sepa;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Writes one ISO 20022 pain.001.001.09 customer credit transfer initiation per payout run. */
public class PainFileWriter {

    private static final Logger log = LoggerFactory.getLogger(PainFileWriter.class);

    private static final DateTimeFormatter EXEC_DATE = DateTimeFormatter.ofPattern("YYYY-MM-dd");
    private static final DateTimeFormatter FILE_DATE = DateTimeFormatter.ofPattern("YYYYMMdd");
    private static final DateTimeFormatter FILE_TIME = DateTimeFormatter.ofPattern("HHmm");

    private final Path outDir;
    private final String debtorIban;
    private final String debtorBic;

    public PainFileWriter(Path outDir, String debtorIban, String debtorBic) {
        this.outDir = outDir;
        this.debtorIban = debtorIban;
        this.debtorBic = debtorBic;
    }

    public Path write(LocalDate businessDate, LocalTime runTime, List<Payout> payouts) throws IOException {
        String msgId = "PO-" + FILE_DATE.format(businessDate) + "-" + FILE_TIME.format(runTime);
        Path file = outDir.resolve("PAYOUT_" + FILE_DATE.format(businessDate) + "_" + FILE_TIME.format(runTime) + ".xml");
        BigDecimal ctrlSum = payouts.stream().map(Payout::amount).reduce(BigDecimal.ZERO, BigDecimal::add);
        try (OutputStream out = Files.newOutputStream(file)) {
            Pain001Document doc = new Pain001Document(msgId, debtorIban, debtorBic)
                    .requestedExecutionDate(EXEC_DATE.format(businessDate))
                    .batchBooking(true);
            payouts.forEach(doc::addCreditTransfer);
            doc.writeTo(out);
        }
        log.info("wrote {} MsgId={} ReqdExctnDt={} NbOfTxs={} CtrlSum={}",
                file.getFileName(), msgId, EXEC_DATE.format(businessDate), payouts.size(), ctrlSum);
        return file;
    }
}
