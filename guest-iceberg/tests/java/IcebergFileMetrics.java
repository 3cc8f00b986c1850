import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.ParquetUtil;

/**
 * The metrics of every data file of the current snapshot of Iceberg tables, twice: as the
 * manifest records them (what the Rust plugin wrote) and as Java Iceberg (the version Fluss's
 * Iceberg plugin ships) computes them from the Parquet footer with the table's metrics config,
 * which is what Java's own writers record. One JSON object per file:
 * {"path", "records", "manifest": {...}, "java": {...}}, each metrics object holding
 * "value_counts", "null_value_counts", "lower_bounds" and "upper_bounds" keyed by field id
 * (bounds as lowercase hex of their single-value serialization).
 *
 *   java -cp <iceberg plugin jars> IcebergFileMetrics <table-dir>...
 */
public final class IcebergFileMetrics {
    private static String counts(Map<Integer, Long> m) {
        List<String> out = new ArrayList<>();
        if (m != null) {
            for (Map.Entry<Integer, Long> e : new TreeMap<>(m).entrySet()) {
                out.add("\"" + e.getKey() + "\":" + e.getValue());
            }
        }
        return "{" + String.join(",", out) + "}";
    }

    private static String bounds(Map<Integer, ByteBuffer> m) {
        List<String> out = new ArrayList<>();
        if (m != null) {
            for (Map.Entry<Integer, ByteBuffer> e : new TreeMap<>(m).entrySet()) {
                ByteBuffer b = e.getValue().duplicate();
                StringBuilder hex = new StringBuilder();
                while (b.hasRemaining()) {
                    hex.append(String.format("%02x", b.get()));
                }
                out.add("\"" + e.getKey() + "\":\"" + hex + "\"");
            }
        }
        return "{" + String.join(",", out) + "}";
    }

    private static String metrics(Map<Integer, Long> values, Map<Integer, Long> nulls,
            Map<Integer, ByteBuffer> lower, Map<Integer, ByteBuffer> upper) {
        return "{\"value_counts\":" + counts(values) + ",\"null_value_counts\":" + counts(nulls)
                + ",\"lower_bounds\":" + bounds(lower) + ",\"upper_bounds\":" + bounds(upper) + "}";
    }

    public static void main(String[] args) throws Exception {
        HadoopTables tables = new HadoopTables(new Configuration());
        for (String dir : args) {
            Table t = tables.load(dir);
            MetricsConfig config = MetricsConfig.forTable(t);
            try (CloseableIterable<FileScanTask> tasks = t.newScan().includeColumnStats().planFiles()) {
                for (FileScanTask task : tasks) {
                    DataFile f = task.file();
                    Metrics m = ParquetUtil.fileMetrics(t.io().newInputFile(f.location()), config);
                    System.out.println("{\"path\":\"" + f.location() + "\",\"records\":" + f.recordCount()
                            + ",\"manifest\":" + metrics(f.valueCounts(), f.nullValueCounts(),
                                    f.lowerBounds(), f.upperBounds())
                            + ",\"java\":" + metrics(m.valueCounts(), m.nullValueCounts(),
                                    m.lowerBounds(), m.upperBounds())
                            + "}");
                }
            }
        }
    }
}
